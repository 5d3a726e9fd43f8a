# Which suppliers do we depend on most? Stock value per supplier.
from collections import defaultdict

catalog = await list_products()
value = defaultdict(float)
count = defaultdict(int)
for p in catalog["products"]:
    value[p["supplier"]] += p["price"] * p["stock"]
    count[p["supplier"]] += 1
for supplier in sorted(value, key=value.get, reverse=True):
    print(f"{supplier:<12} {count[supplier]} products  {value[supplier]:>9.2f}")
