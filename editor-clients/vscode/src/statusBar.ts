// The status bar item: shows the StatusModel's state, opens the log on click.

import * as vscode from 'vscode';
import { INSTRUCTIONS_CONTEXT, StatusModel } from './status';

export const SHOW_LOG_COMMAND = 'diffusionLsp.showLog';

export class StatusBar implements vscode.Disposable {
  readonly model = new StatusModel();
  private readonly item = vscode.window.createStatusBarItem('diffusionLsp.status', vscode.StatusBarAlignment.Right, 100);
  private instructions: boolean | undefined;

  constructor() {
    this.item.name = 'Diffusion LSP';
    this.item.command = SHOW_LOG_COMMAND;
    this.update(() => undefined);
  }

  /** Shows the item (once the server is started: a window without a document it serves shows none). */
  show(): void {
    this.item.show();
  }

  /** Applies a change to the model and repaints. */
  update(change: (model: StatusModel) => void): void {
    change(this.model);
    this.render();
    // Which rewrite command the palette, the context menu and Ctrl+Alt+R show: with an instruction only
    // when the backend follows one.
    if (this.model.takesInstructions !== this.instructions) {
      this.instructions = this.model.takesInstructions;
      void vscode.commands.executeCommand('setContext', INSTRUCTIONS_CONTEXT, this.instructions);
    }
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const view = this.model.view();
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor =
      view.severity === 'error'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : view.severity === 'warning'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }
}
