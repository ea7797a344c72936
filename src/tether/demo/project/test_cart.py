# pyright: reportMissingImports=false
import unittest

from pricing import Item, apply_discount, total


class CartTest(unittest.TestCase):
    def test_total_without_discount(self) -> None:
        self.assertEqual(total([Item("apple", 0.5, 4), Item("pear", 1.25)]), 3.25)

    def test_discount_is_a_percentage(self) -> None:
        self.assertEqual(apply_discount(200.0, 10), 180.0)

    def test_total_with_discount(self) -> None:
        self.assertEqual(total([Item("book", 40.0, 2)], discount_percent=25), 60.0)


if __name__ == "__main__":
    unittest.main()
