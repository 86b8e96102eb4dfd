module blockspace.exchange/matcher

go 1.26
