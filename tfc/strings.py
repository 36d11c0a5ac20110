"""`tf.strings`: the string ops under TF's names there (tfc/ops/strings.py holds them)."""

from tfc.ops.strings import (
    as_string,
    lower,
    reduce_join,
    regex_full_match,
    regex_replace,
    substr,
    upper,
)
from tfc.ops.strings import string_format as format  # noqa: A004 - TF's name
from tfc.ops.strings import string_join as join
from tfc.ops.strings import string_length as length
from tfc.ops.strings import string_split_scalar as split
from tfc.ops.strings import string_strip as strip
from tfc.ops.strings import string_to_hash_bucket as to_hash_bucket
from tfc.ops.strings import string_to_hash_bucket_fast as to_hash_bucket_fast
from tfc.ops.strings import string_to_hash_bucket_strong as to_hash_bucket_strong
from tfc.ops.strings import string_to_number as to_number

__all__ = [
    "as_string",
    "format",
    "join",
    "length",
    "lower",
    "reduce_join",
    "regex_full_match",
    "regex_replace",
    "split",
    "strip",
    "substr",
    "to_hash_bucket",
    "to_hash_bucket_fast",
    "to_hash_bucket_strong",
    "to_number",
    "upper",
]
