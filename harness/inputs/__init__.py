"""Inputs layer: values drawn from a case's distributions, memory layouts, the argument list."""
from .args import Arg, attrs_of
from .layout import TensorArg, materialize
from .preparation import build_args, mutate, poison, prepare

__all__ = ["Arg", "attrs_of", "TensorArg", "materialize", "build_args", "mutate", "poison", "prepare"]
