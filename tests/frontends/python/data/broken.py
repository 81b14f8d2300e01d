"""Targets that go wrong in every way a user's target can, for the error tests."""

from __future__ import annotations

from typing import Any

import tensorflow as tf


def raises() -> Any:
    raise ValueError("the data directory is missing")


def wrong_type() -> Any:
    return 42


def takes_arguments(model: Any) -> Any:
    return {"losses": {}}


def bad_key() -> Any:
    return {"losses": {"l": lambda: tf.constant(1.0)}, "variabels": []}


def loss_with_arguments() -> Any:
    return {"losses": {"l": lambda y_true, y_pred: tf.constant(1.0)}}


def loss_raises() -> Any:
    def loss() -> Any:
        raise KeyError("labels")

    return {"losses": {"l": loss}}


def loss_returns_none() -> Any:
    return {"losses": {"l": lambda: None}}


def loss_returns_a_list() -> Any:
    w = tf.Variable(1.0)
    return {"losses": {"l": lambda: [w * 1.0, w * 2.0]}}


def integer_loss() -> Any:
    w = tf.Variable(3)
    return {"losses": {"l": lambda: w * 2}}


def bad_expect() -> Any:
    return {"losses": {"l": lambda: tf.constant(1.0)}, "expect": {"m": {"none": ["*"]}}}


def not_variables() -> Any:
    return {"losses": {"l": lambda: tf.constant(1.0)}, "variables": [tf.constant(1.0)]}


NOT_CALLABLE = 3


def runtime_failure() -> Any:
    w = tf.Variable([1.0, 2.0])
    return {"losses": {"l": lambda: tf.reduce_sum(tf.gather(w, [5]))}}
