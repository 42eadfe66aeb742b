from .models import Item


class Store:
    """Items by SKU."""

    def __init__(self) -> None:
        self.items: dict[str, Item] = {}

    def add(self, item: Item) -> None:
        self.items[item.sku] = item

    def restock(self, sku: str, quantity: int) -> int:
        """Adds quantity to an item's stock and returns the new level."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        item = self.items[sku]  # TODO: raise a clear error for an unknown SKU
        item.quantity += quantity
        return item.quantity

    def sell(self, sku: str, quantity: int) -> int:
        item = self.items[sku]
        if quantity > item.quantity:
            raise ValueError(f"only {item.quantity} of {sku} in stock")
        item.quantity -= quantity
        return item.quantity

    def total_value(self) -> float:
        return sum(item.value() for item in self.items.values())
