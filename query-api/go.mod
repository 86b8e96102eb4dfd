module blockspace.exchange/query-api

go 1.26
