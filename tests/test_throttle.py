"""The failure throttle itself, on a clock the test moves: the allowance, the refill, successes costing
nothing, IPv6 clients as their /64, memory bounded; and the trusted-proxy setting's checks."""

from __future__ import annotations

import pytest

from mcp_server.settings import ServerSettings, proxy_list
from mcp_server.throttle import FailureThrottle, client_of


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_gets_its_allowance_at_once_then_one_more_per_refill_interval() -> None:
    clock = Clock()
    throttle = FailureThrottle(6, clock=clock)  # six at once, then one per 10 s
    for _ in range(6):
        assert throttle.retry_after("a") == 0
        throttle.failed("a")
    assert throttle.retry_after("a") == 10
    assert throttle.retry_after("b") == 0  # another client is untouched
    clock.now += 9.5
    assert throttle.retry_after("a") == 1
    clock.now += 0.5
    assert throttle.retry_after("a") == 0
    throttle.failed("a")
    assert throttle.retry_after("a") == 10
    clock.now += 3600
    assert throttle.retry_after("a") == 0
    for _ in range(6):  # refilled to the allowance, never beyond it
        throttle.failed("a")
    assert throttle.retry_after("a") == 10


def test_memory_is_bounded_by_forgetting_the_least_recent_client() -> None:
    throttle = FailureThrottle(1, clock=Clock(), max_clients=3)
    for client in ("a", "b", "c", "d"):
        throttle.failed(client)
    assert throttle.retry_after("a") == 0  # forgotten
    assert [throttle.retry_after(c) for c in ("b", "c", "d")] == [60, 60, 60]


@pytest.mark.parametrize(
    ("client", "counted_as"),
    [
        (("203.0.113.9", 1), "203.0.113.9"),
        (("2001:db8:1:2:3:4:5:6", 1), "2001:db8:1:2::/64"),
        (("::ffff:203.0.113.9", 1), "203.0.113.9"),
        (("testclient", 1), "testclient"),
        (None, "unknown"),
    ],
)
def test_a_client_is_counted_by_its_address_and_an_ipv6_one_by_its_64(
    client: tuple[str, int] | None, counted_as: str
) -> None:
    assert client_of({"type": "http", "client": client}) == counted_as


def test_trusted_proxies_must_be_addresses_or_blocks_never_everyone() -> None:
    assert proxy_list(" 10.0.0.0/8, 192.0.2.7 ,") == ["10.0.0.0/8", "192.0.2.7"]
    with pytest.raises(ValueError, match=r"'\*' would believe any X-Forwarded-For"):
        ServerSettings(mcp_trusted_proxies="*")
    with pytest.raises(ValueError, match=r"'lb\.example\.com' is not an IP address or CIDR block"):
        ServerSettings(mcp_trusted_proxies="lb.example.com")
