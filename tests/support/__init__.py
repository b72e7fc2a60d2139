"""What tests share: people and clients, data builders, recorder payloads, loopback servers, real processes, the
browser driver and its page helpers. Fixtures live in conftest.py files; helpers here, never in a test module."""
