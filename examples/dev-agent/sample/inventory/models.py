from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    quantity: int = 0
    unit_price: float = 0.0

    def value(self) -> float:
        return self.quantity * self.unit_price
