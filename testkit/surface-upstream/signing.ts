/** Real signed transactions (serialized hex), as wallets and the chain's background senders build them. */
import { Cl, makeContractCall, makeContractDeploy, makeSTXTokenTransfer, PostConditionMode, type ClarityValue } from '@stacks/transactions';
import type { Wallet } from './wallets.js';

export async function signTransfer(from: Wallet, recipient: string, amount: bigint, nonce: number, fee: bigint): Promise<string> {
  const tx = await makeSTXTokenTransfer({ recipient, amount, senderKey: from.key, network: 'testnet', nonce: BigInt(nonce), fee });
  return tx.serialize();
}

export async function signContractCall(
  from: Wallet,
  contractId: string,
  functionName: string,
  functionArgs: ClarityValue[],
  nonce: number,
  fee: bigint,
): Promise<string> {
  const [contractAddress = '', contractName = ''] = contractId.split('.');
  const tx = await makeContractCall({
    contractAddress,
    contractName,
    functionName,
    functionArgs,
    senderKey: from.key,
    network: 'testnet',
    nonce: BigInt(nonce),
    fee,
    postConditionMode: PostConditionMode.Allow,
    validateWithAbi: false,
  });
  return tx.serialize();
}

export async function signDeploy(from: Wallet, contractName: string, codeBody: string, nonce: number): Promise<string> {
  const tx = await makeContractDeploy({
    contractName,
    codeBody,
    senderKey: from.key,
    network: 'testnet',
    nonce: BigInt(nonce),
    fee: 10_000n,
    postConditionMode: PostConditionMode.Allow,
  });
  return tx.serialize();
}

export { Cl };
