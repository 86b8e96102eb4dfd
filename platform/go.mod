module blockspace.exchange/platform

go 1.26
