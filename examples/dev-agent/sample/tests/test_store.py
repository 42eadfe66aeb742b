import pytest

from inventory import Item, Store


def test_restock_adds_to_the_stock():
    store = Store()
    store.add(Item("A1", "bolt", quantity=5))
    assert store.restock("A1", 10) == 15


def test_cannot_sell_more_than_in_stock():
    store = Store()
    store.add(Item("A1", "bolt", quantity=1))
    with pytest.raises(ValueError):
        store.sell("A1", 2)
