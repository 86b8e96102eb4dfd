module blockspace.exchange/topics

go 1.26
