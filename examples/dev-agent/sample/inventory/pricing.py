from .models import Item

VAT = 0.2


def price_with_vat(item: Item) -> float:
    # TODO: VAT differs per country; take it as a parameter
    return round(item.unit_price * (1 + VAT), 2)


def bulk_discount(quantity: int) -> float:
    if quantity >= 100:
        return 0.1
    if quantity >= 10:
        return 0.05
    return 0.0
