#!/usr/bin/env python3
"""Parses a Prometheus text exposition from standard input with the official Python
client's parser (prometheus_client.parser) and prints, as JSON, each family's type and
its samples (name, labels, value). Exits non-zero, with the parser's message, when the
text does not parse."""

import json
import sys

from prometheus_client.parser import text_string_to_metric_families


def main() -> int:
    text = sys.stdin.read()
    try:
        families = {
            f.name: {
                "type": f.type,
                "help": f.documentation,
                "samples": [
                    {"name": s.name, "labels": s.labels, "value": s.value}
                    for s in f.samples
                ],
            }
            for f in text_string_to_metric_families(text)
        }
    except Exception as e:  # the parser raises ValueError and friends
        print(f"not a valid exposition: {e}", file=sys.stderr)
        return 1
    json.dump(families, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
