"""Write the texts a news encoder reads ("category | title", as `fastformer train news --news-fields category,title`)
of MIND news files, one JSON Lines file of {"news_id", "text"} (each text once) that `fastformer train distill
--train` (or `--exclude`) reads.

    python benchmarks/distill/news_titles.py runs/news-titles-train.jsonl runs/news-mind/mind-valid \
        ../shared/data/mind/news_sample.tsv.gz
    python benchmarks/distill/news_titles.py runs/news-titles-test.jsonl runs/news-mind/mind-test

Why: the shipped student was distilled on 256-token pieces of reviews and articles, and the news encoder reads
~15-token titles; a short distillation on the training split's titles (the test split's given to `--exclude`, so no
test text is ever trained on) asks whether matching the teacher on that input is what the news student lacks
(benchmarks/distill/news_titles.sh).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fastformer.data.mind import read_news


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="the JSON Lines file to write")
    parser.add_argument("sources", nargs="+", help="MIND folders (with a news.tsv) or news.tsv files (.gz too)")
    parser.add_argument("--fields", default="category,title", help="as --news-fields (default: %(default)s)")
    args = parser.parse_args(argv)
    fields = [f.strip() for f in args.fields.split(",") if f.strip()]
    counts, seen = {}, set()
    with open(args.output, "w", encoding="utf-8") as f:
        for source in args.sources:
            news = read_news(Path(source) / "news.tsv" if Path(source).is_dir() else source)
            counts[source] = len(news)
            for news_id, item in sorted(news.items()):
                text = item.text(fields)
                if text and text not in seen:
                    seen.add(text)
                    f.write(json.dumps({"news_id": news_id, "text": text}) + "\n")
    print(json.dumps({"output": args.output, "news": counts, "texts": len(seen)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
