"""What the suite covers of the product: ``python -m covered`` (``make coverage``)."""
