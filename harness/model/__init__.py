"""The case model (lowest harness layer above the enum tables): case files -> OpSpec + Cases."""
from .load import load
from .spec import LAYOUTS, Case, Check, Deviation, Limit, Mutation, OpDescriptor, OpSpec, Param
from .vocabulary import Vocabulary

__all__ = ["load", "LAYOUTS", "Case", "Check", "Deviation", "Limit", "Mutation", "OpDescriptor", "OpSpec", "Param",
           "Vocabulary"]
