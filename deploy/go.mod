module blockspace.exchange/deploy

go 1.26
