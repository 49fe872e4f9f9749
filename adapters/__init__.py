"""Model backends for umni roles."""
