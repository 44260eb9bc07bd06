"""One factory for the chat model behind the agent, chosen by ``SUPERVISOR_MODEL`` or ``--model``."""

from __future__ import annotations

import os

import boto3
from botocore.config import Config
from langchain_core.language_models import BaseChatModel
from pydantic import SecretStr

from supervisor.diagnosis.rules.model import RulesChatModel
from supervisor.schemas import AgentError
from supervisor.settings import SupervisorSettings

REGION_SETTINGS = (
    "AWS_REGION (or AWS_DEFAULT_REGION), or `region` in the AWS_PROFILE's section of the AWS config file"
)


def bedrock_region() -> str:
    """The AWS configuration chain's region; a ``config`` AgentError saying what to set when it names
    none (the product never picks a region of its own)."""
    # botocore reads AWS_DEFAULT_REGION and the profile's region but not AWS_REGION, which the other AWS
    # SDKs (and langchain-aws) read first.
    region = os.environ.get("AWS_REGION") or boto3.Session().region_name
    if not region:
        raise AgentError("config", f"no AWS region is configured for Bedrock: set {REGION_SETTINGS}")
    return str(region)


def build_model(spec: str, settings: SupervisorSettings) -> BaseChatModel:
    """``rules``; ``bedrock:<model or inference-profile id>`` (Converse on the standard AWS chain, which
    includes ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, the prompt's fixed prefix cached); or any other
    ``provider:model`` through ``init_chat_model``."""
    if spec == "rules":
        return RulesChatModel()
    provider, _, model_id = spec.partition(":")
    if not provider or not model_id:
        raise AgentError("config", f"model {spec!r} is not 'rules' or 'provider:model'")
    if provider == "bedrock":
        from supervisor.agent.bedrock import PromptCachingConverse

        config = Config(
            retries={"mode": "standard", "total_max_attempts": settings.bedrock_max_attempts},
            connect_timeout=10,
            read_timeout=settings.llm_timeout,
        )
        return PromptCachingConverse(
            model_id=model_id,
            region_name=bedrock_region(),
            config=config,
            temperature=0,
            max_tokens=settings.llm_max_output_tokens,
            disable_streaming=True,  # Converse only: the deployed role grants bedrock:InvokeModel alone
        )
    if provider == "openai":
        return _openai(model_id, settings)
    if provider == "anthropic" and not os.environ.get("ANTHROPIC_API_KEY"):
        raise AgentError("config", f"model {spec!r} needs ANTHROPIC_API_KEY, Anthropic's API key")
    from langchain.chat_models import init_chat_model

    try:
        return init_chat_model(
            model_id, model_provider=provider, temperature=0, max_tokens=settings.llm_max_output_tokens
        )
    except ImportError as error:
        raise AgentError(
            "config", f"model {spec!r} needs a package that is not installed: {error}"
        ) from error
    except ValueError as error:
        raise AgentError("config", f"model {spec!r} cannot be built: {error}") from error


def _openai(model_id: str, settings: SupervisorSettings) -> BaseChatModel:
    """OpenAI's API, or any server that speaks it (SUPERVISOR_OPENAI_BASE_URL): Ollama, vLLM, llama.cpp's
    server, LM Studio."""
    try:
        from supervisor.agent.openai_chat import CompatibleChatOpenAI, unshared_client
    except ImportError as error:
        raise AgentError(
            "config",
            f"model 'openai:{model_id}' needs langchain-openai: pip install 'incident-response[openai]'",
        ) from error
    key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else None
    key = key or os.environ.get("OPENAI_API_KEY")
    if key is None and settings.openai_base_url is None:
        raise AgentError(
            "config",
            f"model 'openai:{model_id}' has no key: set SUPERVISOR_OPENAI_API_KEY (or OPENAI_API_KEY), or "
            "SUPERVISOR_OPENAI_BASE_URL for a server that needs none",
        )
    return CompatibleChatOpenAI(
        model=model_id,
        http_async_client=unshared_client(),
        base_url=settings.openai_base_url,
        api_key=SecretStr(key or "none"),  # a local server ignores it; the client needs one
        temperature=0,
        timeout=settings.llm_timeout,
        max_completion_tokens=settings.llm_max_output_tokens,
        classic_max_tokens=settings.openai_base_url is not None,
    )
