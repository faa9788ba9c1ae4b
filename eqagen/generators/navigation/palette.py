"""The colours the embedded houses paint their objects with (``houses.py``); the question engine reads
them as the colours a navigation object may have, without importing the house generator."""

COLORS = ("white", "black", "gray", "brown", "beige", "blue", "green", "red", "yellow", "orange")
