"""Self-supervised pretraining: masked LM or ELECTRA."""
