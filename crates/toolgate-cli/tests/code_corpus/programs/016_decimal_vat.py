# Work out the VAT (19%) on ORD-20931 exactly, to the cent, after the discount.
from decimal import Decimal, ROUND_HALF_UP

order = get_order(order_id="ORD-20931")
net = sum(Decimal(str(i["unit_price"])) * i["quantity"] for i in order["items"])
net -= Decimal(str(order["discount"]))
vat = (net * Decimal("0.19")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
gross = net + vat
{"net": str(net), "vat": str(vat), "gross": str(gross)}
