"""Loopback fakes of the servers the real client libraries talk to (OpenAI-compatible, Discord, Open-Meteo)."""
