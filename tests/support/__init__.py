"""Shared test helpers: servers, engines, table builders and oracles the tests use."""
