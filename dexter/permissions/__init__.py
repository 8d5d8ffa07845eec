"""Permission decisions for tool calls (allow, ask, deny), made before a call runs."""
