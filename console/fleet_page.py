"""/fleet: every function's incidents of the last 90 days (``console.history.fleet``): a chart of incidents
by fault class each week, stacked, and a row per function with what its fixes did."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console.data import IncidentReader
from console.history import Fleet, fleet
from console.templating import Render
from supervisor.incident.store import RECENT_INDEX

WIDTH, HEIGHT, AXIS = 780, 220, 28  # the chart's box, and the room its labels take
PALETTE: Final = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str  # what hovering it says


def chart(view: Fleet) -> tuple[list[Bar], dict[str, str], int]:
    """The stacked bars (a week's incidents, one segment per fault class), each class's colour, and the
    tallest week's count (the scale)."""
    colours = {fault: PALETTE[n % len(PALETTE)] for n, fault in enumerate(view.by_week)}
    totals = [sum(counts[week] for counts in view.by_week.values()) for week in range(len(view.weeks))]
    tallest = max(totals, default=0) or 1
    step = (WIDTH - AXIS) / max(len(view.weeks), 1)
    bars = []
    for week, label in enumerate(view.weeks):
        bottom = float(HEIGHT - AXIS)
        for fault, counts in view.by_week.items():
            if counts[week]:
                height = (HEIGHT - 2 * AXIS) * counts[week] / tallest
                bottom -= height
                title = f"week of {label}: {counts[week]} {fault}"
                bars.append(Bar(AXIS + week * step + 2, bottom, step - 4, height, colours[fault], title))
    return bars, colours, tallest


def fleet_route(reader: IncidentReader, page: Render) -> Route:
    def fleet_page(request: Request) -> Response:  # DynamoDB reads: Starlette runs it in its thread pool
        view = fleet(reader.dynamodb, reader.state_table, RECENT_INDEX, datetime.now(UTC))
        bars, colours, tallest = chart(view)
        return page(
            request,
            "fleet.html",
            fleet=view,
            bars=bars,
            colours=colours,
            tallest=tallest,
            width=WIDTH,
            height=HEIGHT,
            axis=AXIS,
        )

    return Route("/fleet", fleet_page)
