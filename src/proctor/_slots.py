"""A faster `__init__` for frozen, slotted dataclasses: the fields stored while the instance is a draft.

The `__init__` that `dataclass(frozen=True)` writes stores each field with `object.__setattr__` (a frozen
class refuses plain assignment): ~1,600 instructions a field, ~37,000 to build a 23-field `Case`, and a
5,000-case suite builds 5,000 (`dataclasses.replace` builds each again). `slot_init` gives the class an
`__init__` of the same signature that turns the new instance into a *draft*, an unfrozen class with the
same slots (CPython lets an instance change between classes of one layout), stores the fields with plain
assignments and turns it back: ~10,700 instructions for `Case`, and an instance equal to the dataclass's.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["slot_init"]

T = TypeVar("T")


class _Factory:
    """The default of a parameter whose field has a `default_factory` (shown as dataclasses show it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()


def slot_init(cls: type[T]) -> type[T]:
    """Replace a frozen, slotted dataclass's `__init__` with a faster one of the same signature.

    Parameters, defaults and default factories are the dataclass's own, in its order; the instance is the
    one the dataclass's `__init__` would make (equal, of the class, still frozen).

    Raises:
        TypeError: `cls` is not a frozen dataclass with slots of its own (directly on `object`), or has
            what this `__init__` does not do (`__post_init__`, a field outside `__init__`, an `InitVar`, a
            keyword-only field).
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__ or cls.__bases__ != (object,):
        raise TypeError(f"{cls.__name__} is not a frozen dataclass with slots, directly on object")
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # a dataclass: checked above
    code = cls.__init__.__code__
    own = code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount]  # the dataclass's parameters
    if hasattr(cls, "__post_init__") or own != tuple(f.name for f in fields if f.init and not f.kw_only):
        raise TypeError(f"{cls.__name__}: __post_init__, InitVars and keyword-only fields are not supported")
    draft = type(f"{cls.__name__}Draft", (), {"__slots__": cls.__dict__["__slots__"], "__module__": cls.__module__})
    probe = object.__new__(cls)
    object.__setattr__(probe, "__class__", draft)  # raises here, not in a run, if the layouts differ
    probe.__class__ = cls
    init = _draft_init(cls, draft, fields)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    init.__annotations__ = dict(cls.__init__.__annotations__)
    cls.__init__ = init  # type: ignore[method-assign]
    return cls


def _draft_init(cls: type, draft: type, fields: tuple[dataclasses.Field[Any], ...]) -> Any:
    """The `__init__`: default factories called, the instance a draft, its fields assigned, back to `cls`."""
    names = [field.name for field in fields]
    this = "__dataclass_self__" if "self" in names else "self"  # as dataclasses name it
    namespace: dict[str, Any] = {
        "__slots_factory__": _FACTORY,
        "__slots_setattr__": object.__setattr__,
        "__slots_draft__": draft,
        "__slots_cls__": cls,
    }
    signature, factories = [], []
    for index, field in enumerate(fields):
        if field.default is not dataclasses.MISSING:
            namespace[f"__slots_default{index}__"] = field.default
            signature.append(f"{field.name}=__slots_default{index}__")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"__slots_factory{index}__"] = field.default_factory
            signature.append(f"{field.name}=__slots_factory__")
            factories.append(f" if {field.name} is __slots_factory__: {field.name} = __slots_factory{index}__()")
        else:
            signature.append(field.name)
    source = "\n".join(
        [
            f"def __init__({this}, {', '.join(signature)}):",
            *factories,
            f" __slots_setattr__({this}, '__class__', __slots_draft__)",
            *(f" {this}.{name} = {name}" for name in names),
            f" {this}.__class__ = __slots_cls__",
        ]
    )
    exec(source, namespace)  # the source is made above from the dataclass's field names only
    return namespace["__init__"]
