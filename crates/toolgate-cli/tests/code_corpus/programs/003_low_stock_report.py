# List everything at or below its reorder level, with how many to order to get back to twice the reorder level.
products = list_products(filter="low_stock")["products"]
to_order = []
for p in products:
    if p["stock"] <= p["reorder_level"]:
        to_order.append({
            "sku": p["sku"],
            "name": p["name"],
            "stock": p["stock"],
            "order_qty": 2 * p["reorder_level"] - p["stock"],
        })
to_order.sort(key=lambda row: row["order_qty"], reverse=True)
to_order
