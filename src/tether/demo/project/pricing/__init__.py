"""Shopping-cart totals with percentage discounts."""

from .cart import Item, apply_discount, total

__all__ = ["Item", "apply_discount", "total"]
