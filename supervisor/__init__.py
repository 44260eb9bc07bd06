"""LangGraph supervisor that calls the MCP diagnostic tools and submits an evidence-pointed Diagnosis."""
