module blockspace.exchange/orderflow-relay

go 1.26
