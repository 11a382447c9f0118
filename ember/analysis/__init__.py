"""Analyses of ember IR that verifiers and lowerings share."""
