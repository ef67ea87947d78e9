"""load_agent_settings: defaults, parsing, and one clear error naming the variable."""

from __future__ import annotations

import pytest

from agent.config import DEFAULT_BASE_URL, AgentSettings, load_agent_settings
from agent.errors import ConfigError


def test_defaults():
    s = load_agent_settings({})

    assert s == AgentSettings()
    assert (s.base_url, s.protocol, s.temperature, s.timeout_s) == (DEFAULT_BASE_URL, "text", 0.2, 60.0)
    assert (s.max_retries, s.max_steps, s.tool_timeout_s, s.searxng_url) == (3, 8, 15.0, None)
    assert s.open_meteo_geocoding_url.startswith("https://geocoding-api.open-meteo.com/")
    assert s.open_meteo_forecast_url.startswith("https://api.open-meteo.com/")


def test_every_variable_is_read():
    s = load_agent_settings(
        {
            "OPENAI_BASE_URL": "http://localhost:11434/v1/",
            "OPENAI_API_KEY": "sk-x",
            "LLM_MODEL": "qwen2.5:7b",
            "LLM_PROTOCOL": "Native",
            "LLM_TEMPERATURE": "0",
            "LLM_TIMEOUT_S": "12.5",
            "LLM_MAX_RETRIES": "0",
            "AGENT_MAX_STEPS": "4",
            "TOOL_TIMEOUT_S": "3",
            "SEARXNG_URL": "http://127.0.0.1:8888",
            "OPEN_METEO_GEOCODING_URL": "http://127.0.0.1:1/geo",
            "OPEN_METEO_FORECAST_URL": "http://127.0.0.1:1/fc",
        }
    )

    assert s == AgentSettings(
        base_url="http://localhost:11434/v1",
        api_key="sk-x",
        model="qwen2.5:7b",
        protocol="native",
        temperature=0.0,
        timeout_s=12.5,
        max_retries=0,
        max_steps=4,
        tool_timeout_s=3.0,
        searxng_url="http://127.0.0.1:8888",
        open_meteo_geocoding_url="http://127.0.0.1:1/geo",
        open_meteo_forecast_url="http://127.0.0.1:1/fc",
    )


def test_empty_values_count_as_unset():
    s = load_agent_settings({"LLM_TEMPERATURE": "", "SEARXNG_URL": "  ", "LLM_MODEL": ""})

    assert (s.temperature, s.searxng_url, s.model) == (0.2, None, "")


@pytest.mark.parametrize(
    "name, value, expected",
    [
        ("OPENAI_BASE_URL", "foo", "OPENAI_BASE_URL is not a valid http(s) URL: 'foo'"),
        ("OPENAI_BASE_URL", "ftp://x/v1", "OPENAI_BASE_URL is not a valid http(s) URL"),
        ("SEARXNG_URL", "http://", "SEARXNG_URL is not a valid http(s) URL"),
        ("OPEN_METEO_FORECAST_URL", "nope", "OPEN_METEO_FORECAST_URL is not a valid"),
        ("OPENAI_BASE_URL", "http://[::1/v1", "OPENAI_BASE_URL is not a valid http(s) URL: 'http://[::1/v1'"),
        ("OPENAI_BASE_URL", "http://:8080/v1", "OPENAI_BASE_URL is not a valid http(s) URL"),
        ("LLM_PROTOCOL", "xml", "LLM_PROTOCOL must be one of text, native: 'xml'"),
        ("LLM_TEMPERATURE", "hot", "LLM_TEMPERATURE is not a number: 'hot'"),
        ("LLM_TEMPERATURE", "3", "LLM_TEMPERATURE must be between 0 and 2"),
        ("LLM_TEMPERATURE", "nan", "LLM_TEMPERATURE is not a finite number: 'nan'"),
        ("LLM_TIMEOUT_S", "0", "LLM_TIMEOUT_S must be between"),
        ("LLM_TIMEOUT_S", "-5", "LLM_TIMEOUT_S must be between"),
        ("LLM_MAX_RETRIES", "2.5", "LLM_MAX_RETRIES is not a whole number: '2.5'"),
        ("LLM_MAX_RETRIES", "-1", "LLM_MAX_RETRIES must be between 0 and 20"),
        ("AGENT_MAX_STEPS", "0", "AGENT_MAX_STEPS must be between 1 and 100"),
        ("TOOL_TIMEOUT_S", "inf", "TOOL_TIMEOUT_S is not a finite number: 'inf'"),
    ],
)
def test_invalid_values_name_the_variable(name, value, expected):
    with pytest.raises(ConfigError) as info:
        load_agent_settings({name: value})

    assert str(info.value).startswith(expected)


@pytest.mark.parametrize("key", ["sk-se cret", "sk-se\tcret", "sk-se\x00cret", "sk-se\u200bcret"])
def test_key_with_spaces_or_control_characters_is_refused_without_echoing_it(key):
    with pytest.raises(ConfigError) as info:
        load_agent_settings({"OPENAI_API_KEY": key})

    assert "OPENAI_API_KEY" in str(info.value)
    assert "cret" not in str(info.value)


def test_key_never_appears_in_repr():
    s = load_agent_settings({"OPENAI_API_KEY": "sk-very-secret", "LLM_MODEL": "m"})

    assert "sk-very-secret" not in repr(s)


@pytest.mark.parametrize(
    "env, configured, missing",
    [
        ({}, False, "LLM_MODEL and OPENAI_API_KEY"),
        ({"LLM_MODEL": "gpt-4o-mini"}, False, "set OPENAI_API_KEY"),
        ({"OPENAI_API_KEY": "sk-x"}, False, "set LLM_MODEL "),
        ({"LLM_MODEL": "m", "OPENAI_API_KEY": "sk-x"}, True, ""),
        ({"LLM_MODEL": "llama3", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, True, ""),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, False, "set LLM_MODEL "),
    ],
)
def test_is_configured_and_what_is_missing(env, configured, missing):
    s = load_agent_settings(env)

    assert s.is_configured is configured
    assert (missing in s.missing()) if missing else s.missing() == ""
