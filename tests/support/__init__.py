"""Test helpers that are real programs, not mocks: servers and data makers shared by several tests."""
