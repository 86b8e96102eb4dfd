package topics

// AppendJSON appends the JSON encoding of d, byte for byte what
// json.Marshal returns, without reflection: ingress encodes one for every
// submitted transaction.
func (d *DecodedTx) AppendJSON(dst []byte) []byte {
	dst = appendStringField(append(dst, '{'), `"chainId":`, d.ChainID)
	dst = appendStringField(dst, `,"type":`, d.Type)
	dst = appendStringField(dst, `,"hash":`, d.Hash)
	dst = appendStringField(dst, `,"from":`, d.From)
	if d.To == nil {
		dst = append(dst, `,"to":null`...)
	} else {
		dst = appendStringField(dst, `,"to":`, *d.To)
	}
	dst = appendStringField(dst, `,"nonce":`, d.Nonce)
	dst = appendStringField(dst, `,"value":`, d.Value)
	dst = appendStringField(dst, `,"gas":`, d.Gas)
	dst = appendOmitEmpty(dst, `,"gasPrice":`, d.GasPrice)
	dst = appendOmitEmpty(dst, `,"maxFeePerGas":`, d.MaxFeePerGas)
	dst = appendOmitEmpty(dst, `,"maxPriorityFeePerGas":`, d.MaxPriorityFeePerGas)
	dst = appendStringField(dst, `,"data":`, d.Data)
	dst = append(dst, `,"accessList":`...)
	if d.AccessList == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, t := range d.AccessList {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStringField(append(dst, '{'), `"address":`, t.Address)
			dst = appendStrings(append(dst, `,"storageKeys":`...), t.StorageKeys)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	dst = appendOmitEmpty(dst, `,"maxFeePerBlobGas":`, d.MaxFeePerBlobGas)
	if len(d.BlobVersionedHashes) > 0 {
		dst = appendStrings(append(dst, `,"blobVersionedHashes":`...), d.BlobVersionedHashes)
	}
	if len(d.AuthorizationList) > 0 {
		dst = append(dst, `,"authorizationList":[`...)
		for i, a := range d.AuthorizationList {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendStringField(append(dst, '{'), `"chainId":`, a.ChainID)
			dst = appendStringField(dst, `,"address":`, a.Address)
			dst = appendStringField(dst, `,"nonce":`, a.Nonce)
			dst = appendOmitEmpty(dst, `,"authority":`, a.Authority)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// AppendJSON appends the JSON encoding of m, byte for byte what
// json.Marshal returns.
func (m *OrderflowTx) AppendJSON(dst []byte) []byte {
	dst = appendStringField(append(dst, '{'), `"hash":`, m.Hash)
	dst = appendStringField(dst, `,"raw":`, m.Raw)
	dst = m.Tx.AppendJSON(append(dst, `,"tx":`...))
	dst = appendStringField(dst, `,"originator":`, m.Originator)
	dst = appendStringField(dst, `,"refund":{"recipient":`, m.Refund.Recipient)
	dst = appendIntField(dst, `,"percent":`, int64(m.Refund.Percent))
	dst = appendStringField(append(dst, '}'), `,"method":`, m.Method)
	dst = appendIntField(dst, `,"receivedAt":`, m.ReceivedAt)
	return append(dst, '}')
}

func appendOmitEmpty(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	return appendStringField(dst, name, v)
}

// appendStrings appends a string slice as json.Marshal does: null for nil.
func appendStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s, true)
	}
	return append(dst, ']')
}
