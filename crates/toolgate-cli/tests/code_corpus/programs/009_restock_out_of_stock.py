# Restock everything that is out of stock with 50 units each and tell me the adjustment ids.
products = list_products(filter="out_of_stock")["products"]
adjustments = []
for p in products:
    if p["stock"] == 0:
        adj = update_inventory(sku=p["sku"], delta=50, reason="restock")
        adjustments.append((adj["sku"], adj["adjustment_id"], adj["delta"]))
adjustments
