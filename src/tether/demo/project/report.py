# pyright: reportMissingImports=false
"""Print the price report: every SKU with its price before and after the house discount."""

from pricing import apply_discount

HOUSE_DISCOUNT = 15

if __name__ == "__main__":
    print(f"{'sku':<10} {'price':>10} {'discounted':>12}")
    for n in range(1, 2501):
        price = round(1.5 + (n * 37 % 1000) / 10, 2)
        print(f"SKU-{n:05d} {price:>10.2f} {apply_discount(price, HOUSE_DISCOUNT):>12.2f}")
