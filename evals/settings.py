"""Configuration of the benchmark: one pydantic-settings class, read from EVAL_<FIELD>."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

CASES_DIR = Path(__file__).parent / "cases"


class EvalSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EVAL_", extra="ignore")

    cases_dir: Path = Field(default=CASES_DIR, description="The corpus: one <case id>.json per case.")
    out_dir: Path = Field(default=Path("eval-report"), description="Where run writes the leaderboard.")
    jobs: int = Field(
        default=2,
        ge=1,
        le=8,
        description="Live runs: sandbox worlds run at once (each a process of its own).",
    )
    alarm_wait_seconds: float = Field(
        default=8.0, gt=0, le=120, description="How long record waits for a case's alarm to reach SNS."
    )
    cloudtrail_wait_seconds: float = Field(
        default=10.0, gt=0, le=120, description="How long record waits for CloudTrail to list a change."
    )
    encoding: str = Field(
        default="o200k_base", description="The encoding `tokens` counts with: o200k_base or cl100k_base."
    )
