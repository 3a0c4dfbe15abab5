"""The engine of a run, which knows no task: its settings (settings.py), its folder (folder.py), the skeleton
that trains a task (skeleton.py), the Trainer arguments (training.py), its inputs (tokenizer, word vectors;
inputs.py), splits, fine-tuning starts (init_from.py), and the settings of the verbs on a trained folder (verbs.py)."""
