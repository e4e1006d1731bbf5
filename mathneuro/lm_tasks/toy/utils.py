"""Helpers of the toy's task YAMLs (loaded by lm-eval's ``!function``): a multiple-choice task's
items split by whether their answer is a number (the synthetic records' ``numeric`` field)."""

from __future__ import annotations


def numbers(dataset):
    """The items answered by a number (read from a story, or a numeric fact recalled)."""
    return dataset.filter(lambda doc: doc["numeric"])


def words(dataset):
    """The items answered by a word."""
    return dataset.filter(lambda doc: not doc["numeric"])
