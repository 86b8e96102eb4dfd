// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Collateral of the block-space exchange.
/// @notice Users deposit ETH here; the exchange credits the depositor's
/// current account once the Deposit event has enough confirmations.
/// Withdrawals are paid by the operator key, at most once per request id.
contract Collateral {
    /// @notice Emitted for every deposit. `depositor` is the wallet that is
    /// credited; `sender` paid (they differ for depositFor).
    event Deposit(address indexed sender, address indexed depositor, uint256 amount);
    /// @notice Emitted when a withdrawal request is paid.
    event Withdrawal(uint256 indexed requestId, address indexed to, uint256 amount);
    event OperatorChanged(address indexed operator);

    address public operator;
    /// @notice Request ids already paid, so a request is never paid twice.
    mapping(uint256 => bool) public paid;

    error NotOperator();
    error ZeroAmount();
    error AlreadyPaid(uint256 requestId);
    error PayoutFailed(uint256 requestId);

    constructor(address operator_) {
        operator = operator_;
        emit OperatorChanged(operator_);
    }

    /// @notice Deposit msg.value for the sender.
    function deposit() external payable {
        _deposit(msg.sender);
    }

    /// @notice Deposit msg.value for another wallet.
    function depositFor(address depositor) external payable {
        _deposit(depositor);
    }

    function _deposit(address depositor) private {
        if (msg.value == 0) revert ZeroAmount();
        emit Deposit(msg.sender, depositor, msg.value);
    }

    /// @notice Pay a withdrawal request. Only the operator; once per id.
    function withdraw(uint256 requestId, address payable to, uint256 amount) external {
        if (msg.sender != operator) revert NotOperator();
        if (paid[requestId]) revert AlreadyPaid(requestId);
        paid[requestId] = true;
        (bool ok, ) = to.call{value: amount}("");
        if (!ok) revert PayoutFailed(requestId);
        emit Withdrawal(requestId, to, amount);
    }

    function setOperator(address operator_) external {
        if (msg.sender != operator) revert NotOperator();
        operator = operator_;
        emit OperatorChanged(operator_);
    }
}
