package devchain

// The demo validator is registered at every start of the dev stack and of
// the cluster runner, so that markets open as soon as they are up. Both
// keys are public and for the dev chain only: the user key is the first
// account of the Hardhat/Anvil test mnemonic (DevKeys[0]), so any wallet
// can log in as the demo seller.
const (
	DemoUserKey     = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	DemoUserAddress = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"
	// DemoValidatorSeed is the EIP-2333 seed of the demo validator's BLS key.
	DemoValidatorSeed = "blockspace dev demo validator 01"
)
