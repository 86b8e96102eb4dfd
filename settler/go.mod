module blockspace.exchange/settler

go 1.26
