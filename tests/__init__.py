"""Test suite: unit, integration and end-to-end tests against loopback fakes."""
