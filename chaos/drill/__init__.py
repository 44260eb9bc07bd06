"""`incident-drill`: every fault scenario through the whole loop, scored."""
