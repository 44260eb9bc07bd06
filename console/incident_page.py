"""/incidents/{id}: one incident, its diagnosis with each evidence pointer beside the tool answer it
quotes, the timeline chart, and what the diagnosis cost; once re-checked, the provisional diagnosis below
the final one, with what changed; a plan awaiting approval with the form that decides on it
(``console.decision_page``) for an approver."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from console import render
from console.data import OPEN, IncidentReader, account_region
from console.decision_page import DecisionGate
from console.history import beside
from console.templating import Render
from supervisor.incident.notification import stage_label


def incident_route(
    reader: IncidentReader, page: Render, gate: DecisionGate, *, refresh_seconds: int, region: str | None
) -> Route:
    async def incident(request: Request) -> Response:
        incident_id = request.path_params["incident_id"]
        found = reader.incident(incident_id)
        if found is None:
            return page(request, "missing.html", status=404, incident_id=incident_id)
        state, context = found
        diagnosis = (context or {}).get("diagnosis")  # the final one once re-checked
        marks = render.timeline(diagnosis, state, context)
        return page(
            request,
            "incident.html",
            state=state,
            context=context,
            diagnosis=diagnosis,
            stage=stage_label(state) if state.get("status") == "DIAGNOSED" else "",
            provisional=(context or {}).get("provisional_diagnosis"),
            changes=(context or {}).get("recheck_changes"),
            evidence=evidence_rows(diagnosis, list((context or {}).get("tool_results") or [])),
            marks=marks,
            chart_width=render.WIDTH,
            chart_height=render.timeline_height(marks),
            account_region=account_region(state, region),
            cost=render.cost((context or {}).get("model"), render.token_usage(context or {})),
            refresh=refresh_seconds if state.get("status") in OPEN else None,
            decision=gate.form(request, state),
            history=beside(reader.dynamodb, reader.state_table, state, datetime.now(UTC)),
        )

    return Route("/incidents/{incident_id:path}", incident)


def evidence_rows(diagnosis: dict[str, Any] | None, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each evidence pointer with the code's check of it and the tool answer it quotes, highlighted."""
    verification = {p["index"]: p for p in (diagnosis or {}).get("verification", {}).get("pointers", [])}
    rows = []
    for index, pointer in enumerate((diagnosis or {}).get("evidence", [])):
        source = render.evidence_source(pointer, results)
        rows.append(
            {
                "index": index,
                "pointer": pointer,
                "check": verification.get(index),
                "source": source,
                "highlighted": render.highlighted(source["result"], pointer["field"], str(pointer["value"]))
                if source
                else None,
            }
        )
    return rows
