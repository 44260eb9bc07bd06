"""Every case with every model: replayed through the real graph, one after the other, and scored."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from evals.corpus import Case
from evals.replay import replay_case
from evals.score import CaseScore, ModelScore, score_case
from supervisor.agent.models import build_model
from supervisor.agent.prices import Price, price_of
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings


def build_models(specs: list[str], settings: SupervisorSettings) -> dict[str, BaseChatModel]:
    """Each model string's chat model; AgentError (category config) names the one that cannot be built."""
    models = {}
    for spec in specs:
        try:
            SupervisorSettings(supervisor_model=spec)
        except ValidationError as error:
            message = error.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
            raise AgentError("config", message.replace("SUPERVISOR_MODEL", "--model")) from None
        models[spec] = build_model(spec, settings)
    return models


async def run_models(
    models: Mapping[str, BaseChatModel],
    cases: list[Case],
    settings: SupervisorSettings,
    prices: Mapping[str, Price] | None = None,
    progress: Callable[[str, CaseScore], None] | None = None,
) -> list[ModelScore]:
    scores = []
    for label, model in models.items():
        price = price_of(label, dict(prices or {}), settings.openai_base_url)
        cases_scored = []
        for case in cases:
            scored = score_case(await replay_case(case, model, settings), price)
            if progress is not None:
                progress(label, scored)
            cases_scored.append(scored)
        scores.append(ModelScore(label, cases_scored, price))
    return scores
