"""``incident-eval``: a benchmark any model can be scored on.

A case is an incident recorded on the sandbox (the alarm, and every tool answer an investigation could ask
for, captured at incident time) with its expected answer. ``record`` breaks the sandbox through the real
fault injectors and captures cases; ``run`` replays them through the real supervisor graph with any model
and scores the diagnoses; ``tokens`` counts what one investigation costs in input tokens.
"""
