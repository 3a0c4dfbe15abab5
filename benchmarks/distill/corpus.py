"""Write the general-distillation corpus: unlabelled English from several domains, none of it an evaluation text,
to one JSON Lines file of {"source", "text"} that `fastformer train distill --train` reads.

    python benchmarks/distill/corpus.py runs/distill-corpus.jsonl.gz

Sources (../shared/data, each read with the project's reader): IMDB's 50,000 unlabelled reviews (the 109 that also
occur in IMDB's test split are dropped by the distillation run's `--exclude`, see run.sh), Yelp's training reviews
(not dev or test), the Amazon Electronics reviews (not the Amazon Review Full test sample), CNN/DailyMail validation
articles (not the test articles). Why several domains: the student must help on text that is not movie reviews.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys

DATA = "../shared/data"
SOURCES = (
    ("imdb_unsup", f"{DATA}/imdb/imdb_unsup.jsonl.gz", None, "jsonl"),
    ("yelp_train", f"{DATA}/yelp5/yelp_train_small.csv.gz", None, "yelp"),
    ("amazon_electronics", f"{DATA}/amazon/amazon_electronics_sandisk_4915.csv", "reviewText", "csv"),
    ("cnndm_validation", f"{DATA}/cnndm/validation_first1000.csv.gz", "article", "csv"),
)


def yelp_texts(path: str):
    """Yelp's files: CSV without a header, `label,text`."""
    import csv

    from fastformer.data.files import open_text

    with open_text(path) as f:
        for row in csv.reader(f):
            if len(row) >= 2 and row[1].strip():
                yield row[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="the .jsonl.gz file to write")
    args = parser.parse_args(argv)
    from fastformer.data.text_corpus import read_texts

    counts = {}
    with gzip.open(args.output, "wt", encoding="utf-8") as out:
        for name, path, field, kind in SOURCES:
            texts = yelp_texts(path) if kind == "yelp" else read_texts(path, field, kind)
            counts[name] = 0
            for text in texts:
                out.write(json.dumps({"source": name, "text": text}) + "\n")
                counts[name] += 1
    print(json.dumps(dict(output=args.output, texts=counts)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
