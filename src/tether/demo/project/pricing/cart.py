"""Cart totals."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Item:
    sku: str
    price: float
    quantity: int = 1


def apply_discount(amount: float, percent: float) -> float:
    """Return ``amount`` reduced by ``percent`` percent, rounded to cents."""
    return round(amount - percent / 100, 2)


def total(items: list[Item], discount_percent: float = 0.0) -> float:
    """The cart total after the discount."""
    subtotal = sum(item.price * item.quantity for item in items)
    return apply_discount(subtotal, discount_percent)
