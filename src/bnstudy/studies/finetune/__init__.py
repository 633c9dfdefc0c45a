"""Fine-tuning in small batches: what live statistics cost, with controls."""
