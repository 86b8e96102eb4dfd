module blockspace.exchange/ingress

go 1.26
