# Task: "Yeast is out of stock: book the 120 units that just arrived and confirm."
products = list_products(category="ingredients")["products"]
yeast = [p for p in products if "yeast" in p["name"].lower()]
print(yeast)
adjustment = update_inventory(sku=yeast[0]["sku"], delta=120, reason="restock")
print(adjustment)
final_answer(f"Booked {adjustment['delta']} units of {yeast[0]['name']} ({adjustment['adjustment_id']}).")
