// The status bar item: shows the StatusModel's state, opens the log on click.

import * as vscode from 'vscode';
import { StatusModel } from './status';

export const SHOW_LOG_COMMAND = 'diffusionLsp.showLog';

export class StatusBar implements vscode.Disposable {
  readonly model = new StatusModel();
  private readonly item = vscode.window.createStatusBarItem('diffusionLsp.status', vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = 'Diffusion LSP';
    this.item.command = SHOW_LOG_COMMAND;
    this.render();
    this.item.show();
  }

  /** Applies a change to the model and repaints. */
  update(change: (model: StatusModel) => void): void {
    change(this.model);
    this.render();
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
