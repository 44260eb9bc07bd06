"""The chat models the README names, each built from SUPERVISOR_MODEL with what it needs said when missing:
OpenAI or any OpenAI-compatible server (a base URL, a key or neither), Anthropic's API."""

from __future__ import annotations

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_openai import ChatOpenAI
from pydantic import SecretStr, ValidationError

from supervisor.agent.models import build_model
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(variable, raising=False)


def test_an_openai_compatible_server_is_reached_at_its_base_url_without_a_key() -> None:
    settings = SupervisorSettings(openai_base_url="http://127.0.0.1:11434/v1")
    model = build_model("openai:qwen2.5:7b", settings)
    assert isinstance(model, ChatOpenAI)
    assert (model.model_name, model.openai_api_base, model.temperature) == (
        "qwen2.5:7b",
        settings.openai_base_url,
        0,
    )


def test_openai_takes_the_supervisor_s_key_or_openai_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    model = build_model("openai:gpt-4.1", SupervisorSettings(openai_api_key="sk-supervisor"))
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_key == SecretStr("sk-supervisor")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-environment")
    model = build_model("openai:gpt-4.1", SupervisorSettings())
    assert isinstance(model, ChatOpenAI)
    assert model.openai_api_base is None
    assert model.openai_api_key == SecretStr("sk-environment")


def test_openai_with_neither_key_nor_server_says_what_to_set() -> None:
    with pytest.raises(AgentError) as raised:
        build_model("openai:gpt-4.1", SupervisorSettings())
    assert raised.value.category == "config"
    for setting in ("SUPERVISOR_OPENAI_API_KEY", "OPENAI_API_KEY", "SUPERVISOR_OPENAI_BASE_URL"):
        assert setting in raised.value.message


def test_a_base_url_that_is_not_http_is_refused_at_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPERVISOR_OPENAI_BASE_URL", "localhost:11434")
    with pytest.raises(ValidationError, match="SUPERVISOR_OPENAI_BASE_URL must be an http"):
        SupervisorSettings()


def test_anthropic_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AgentError, match="ANTHROPIC_API_KEY") as raised:
        build_model("anthropic:claude-sonnet-4-5", SupervisorSettings())
    assert raised.value.category == "config"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model = build_model("anthropic:claude-sonnet-4-5", SupervisorSettings())
    assert isinstance(model, ChatAnthropic)
    assert model.model == "claude-sonnet-4-5"


@pytest.mark.parametrize("value", ["0", "15", "128001", "many"])
def test_a_reply_cap_out_of_range_is_refused_at_configuration(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUPERVISOR_LLM_MAX_OUTPUT_TOKENS", value)
    with pytest.raises(ValidationError, match="llm_max_output_tokens"):
        SupervisorSettings()


def test_the_reply_cap_reaches_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPERVISOR_LLM_MAX_OUTPUT_TOKENS", "512")
    settings = SupervisorSettings(openai_base_url="http://127.0.0.1:9/v1")
    model = build_model("openai:gemma3", settings)
    assert isinstance(model, ChatOpenAI)
    assert model.max_tokens == 512
